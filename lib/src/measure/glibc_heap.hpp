// Bytes in use in glibc's heap: how tvie measures what is allocated outside LibTorch's allocator (CPU int8:
// fbgemm's packed weights, tvie::nn::Linear::packed_bytes()).
#pragma once

#include <cstdint>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tvie::detail {

// Chunks in use in every arena plus mmapped blocks (mallinfo2: uordblks + hblkhd); -1 where unknown: without glibc
// 2.33's mallinfo2, or under AddressSanitizer, whose allocator replaces glibc's (and keeps freed blocks in
// quarantine), so that glibc's statistics say nothing about the heap. Freed chunks glibc keeps in a thread's cache
// (tcache: small sizes) still count as in use until reused.
inline int64_t heap_in_use_bytes() {
#if defined(__SANITIZE_ADDRESS__)
  return -1;
#elif defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 m = mallinfo2();
  return static_cast<int64_t>(m.uordblks + m.hblkhd);
#else
  return -1;
#endif
}

}  // namespace tvie::detail
