# The libtorch adapter (bindings/torch/, ringload::torch) is optional: AUTO builds it when
# find_package(Torch) succeeds, from CMAKE_PREFIX_PATH / Torch_DIR, or else from the torch that
# .venv-vllm's python (scripts/setup_vllm.sh: PyPI's torch 2.x) reports. OFF skips it; ON fails
# without it. The sanitizer builds skip it under AUTO: libtorch is not instrumented.
set(RINGLOAD_WITH_TORCH AUTO CACHE STRING "Build the libtorch adapter ringload::torch (AUTO, ON, OFF)")
set_property(CACHE RINGLOAD_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(RINGLOAD_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/.venv-vllm/bin/python" CACHE FILEPATH
    "A python whose torch.utils.cmake_prefix_path is tried for find_package(Torch)")

# In a function, so that what TorchConfig sets (CMAKE_CUDA_ARCHITECTURES OFF, CUDA_NVCC_FLAGS,
# Python_*) stays out of the rest of the build; its imported targets are visible everywhere.
function(ringload_find_torch)
    set(RINGLOAD_HAVE_TORCH OFF PARENT_SCOPE)
    set(why "")
    if(RINGLOAD_WITH_TORCH STREQUAL "OFF")
        set(why "RINGLOAD_WITH_TORCH=OFF")
    elseif(RINGLOAD_WITH_TORCH STREQUAL "AUTO" AND NOT RINGLOAD_SANITIZE STREQUAL "")
        set(why "a sanitizer build (libtorch is not instrumented; -DRINGLOAD_WITH_TORCH=ON to try)")
    else()
        # Nothing here is compiled for a GPU against torch: a fixed list skips TorchConfig's
        # probe of the GPUs, a try_run that fails in a project with CUDA enabled and C++20
        # (nvcc has no "CUDA20" dialect; torch 2.13).
        if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
            set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
        endif()
        # A CUDA torch enables the CUDA language, which would cache its compiler's default
        # architectures (75 with CUDA 13) before gpu/ picks ours: defined here (function scope),
        # none is cached. TorchConfig then warns that it ignores CMAKE_CUDA_ARCHITECTURES: harmless.
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
        endif()
        find_package(Torch QUIET)
        if(NOT Torch_FOUND AND EXISTS "${RINGLOAD_TORCH_PYTHON}")
            execute_process(COMMAND "${RINGLOAD_TORCH_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                            OUTPUT_VARIABLE torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                            RESULT_VARIABLE torch_python_failed)
            if(NOT torch_python_failed AND IS_DIRECTORY "${torch_prefix}")
                # The Torch_DIR cache entry that the first attempt left NOTFOUND would hide the hint.
                unset(Torch_DIR CACHE)
                find_package(Torch QUIET PATHS "${torch_prefix}" NO_DEFAULT_PATH)
            endif()
        endif()
        if(Torch_FOUND)
            set(RINGLOAD_HAVE_TORCH ON PARENT_SCOPE)
            set(RINGLOAD_TORCH_VERSION "${Torch_VERSION}" PARENT_SCOPE)
            set(RINGLOAD_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib" PARENT_SCOPE)
            # PyPI's torch finds its CUDA libraries (nccl, cudnn, ...) in site-packages/nvidia/*/lib
            # through its own rpath, but the link of an executable looks in the -rpath dirs first,
            # where /usr/local/cuda/lib holds an older libnccl.so.2 than libtorch_cuda needs:
            # executables linking libtorch are given these dirs with -rpath-link.
            get_filename_component(site_packages "${Torch_DIR}/../../../.." ABSOLUTE)
            file(GLOB link_dirs LIST_DIRECTORIES true "${site_packages}/nvidia/*/lib")
            set(RINGLOAD_TORCH_LINK_DIRS "${link_dirs}" PARENT_SCOPE)
        elseif(EXISTS "${RINGLOAD_TORCH_PYTHON}")
            set(why "find_package(Torch) failed, also with ${RINGLOAD_TORCH_PYTHON}'s torch.utils.cmake_prefix_path")
        else()
            set(why "no Torch in CMAKE_PREFIX_PATH and no ${RINGLOAD_TORCH_PYTHON} (scripts/setup_vllm.sh makes it)")
        endif()
    endif()
    if(NOT Torch_FOUND AND RINGLOAD_WITH_TORCH STREQUAL "ON")
        message(FATAL_ERROR "RINGLOAD_WITH_TORCH=ON but libtorch was not found: ${why}")
    endif()
    if(Torch_FOUND)
        message(STATUS "ringload: libtorch adapter ON (Torch ${Torch_VERSION}, ${Torch_DIR})")
    else()
        message(STATUS "ringload: libtorch adapter OFF: ${why}")
    endif()
endfunction()
ringload_find_torch()
