// engine/include/ringload/engine/thread_sanitizer.hpp
//
// RINGLOAD_UNDER_TSAN is defined where this translation unit is built with ThreadSanitizer
// (clang's __has_feature, gcc's __SANITIZE_THREAD__): for the few places that must tell it
// something, or that it cannot run.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define RINGLOAD_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGLOAD_UNDER_TSAN 1
#endif
#endif
