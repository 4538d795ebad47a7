# Warning and sanitizer flags shared by every ringload target (applied through ringload_flags).
add_library(ringload_flags INTERFACE)
target_compile_options(ringload_flags INTERFACE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(RINGLOAD_WARNINGS_AS_ERRORS)
    target_compile_options(ringload_flags INTERFACE -Werror)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # g++ 12 at -O2 takes Asio's awaitable frames (class operator new/delete) for a mismatched
    # allocation in some coroutines: a false positive.
    target_compile_options(ringload_flags INTERFACE -Wno-mismatched-new-delete)
endif()
if(RINGLOAD_SANITIZE STREQUAL "address")
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=address,undefined)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        # clang 14's -fsanitize=function (part of undefined, C++ only) cannot compile Asio's
        # coroutine frames ("Cannot represent a difference across sections"); g++ has no such check.
        add_compile_options(-fno-sanitize=function)
    endif()
elseif(RINGLOAD_SANITIZE STREQUAL "thread")
    add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
    add_link_options(-fsanitize=thread)
elseif(NOT RINGLOAD_SANITIZE STREQUAL "")
    message(FATAL_ERROR "RINGLOAD_SANITIZE must be empty, address or thread")
endif()
# libFuzzer targets (tests/fuzz/): every object carries coverage for the fuzzer to follow; only
# the fuzz targets link libFuzzer itself. clang only (g++ has no libFuzzer).
if(RINGLOAD_BUILD_FUZZERS)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "RINGLOAD_BUILD_FUZZERS needs clang (the asan preset uses it)")
    endif()
    add_compile_options(-fsanitize=fuzzer-no-link)
endif()
