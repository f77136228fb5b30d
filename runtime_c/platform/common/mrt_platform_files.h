/*
 * mrt_platform_files.h - mrt_platform_files (mrt_platform.h) in C, over two primitives
 * the including platform defines (static, after the #include): open a host file for
 * reading or writing (a handle >= 0, or a negative value), and transfer bytes (the
 * number moved). Private to runtime_c/platform; Arm semihosting has its own, smaller,
 * assembly version of the same steps.
 */
#ifndef MRT_PLATFORM_FILES_H
#define MRT_PLATFORM_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "mrt_platform.h"

static long mrt_platform_open(const char *path, int write);
static long mrt_platform_transfer(int write, long handle, void *data, size_t size);

int mrt_platform_files(const char *path, int write, void *const *buffers,
                       const uint32_t *sizes, uint32_t count) {
  const long handle = mrt_platform_open(path, write);
  if (handle < 0) return MRT_PLATFORM_FILES_OPEN;
  for (; count; --count, ++buffers, ++sizes)
    if (mrt_platform_transfer(write, handle, *buffers, *sizes) != (long)*sizes)
      return MRT_PLATFORM_FILES_SHORT;
  uint8_t extra;
  if (!write && mrt_platform_transfer(0, handle, &extra, 1) != 0) return MRT_PLATFORM_FILES_LONG;
  return MRT_PLATFORM_FILES_OK;
}

#endif /* MRT_PLATFORM_FILES_H */
