/*
 * mrt_device.c - the device harness: serves inference after inference over a UART, so
 * that one flash of a real board answers many runs (docs/device.md is the protocol's
 * specification; toolchain/emu/device_link.py is the host side).
 *
 * Every frame, both ways: 'M' 'R' (sync), type (1 byte), payload length (u32, little
 * endian), the payload, then CRC-32/IEEE (u32 LE, zlib's crc32) of type, length and
 * payload. The host sends 'P' (ping, empty) or 'I' (the inputs, concatenated in signature
 * order); the device answers 'H' (hello: input and output byte counts, u32 each), 'O'
 * (status u32, the inference's cycles u64, then the outputs), or 'E' (a frame error,
 * MRT_DEVICE_ERR_*). A CPU fault sends 'F' (the fault record) and stops.
 *
 * No byte is printed besides frames, and nothing is buffered: the inputs are received
 * straight into the image's input buffers, the outputs sent from its output buffers.
 */
#include <stddef.h>
#include <stdint.h>

#include "minirt.h"
#include "mrt_device.h"
#include "mrt_image.h"
#include "mrt_platform.h"

#define MRT_DEVICE_SYNC0 0x4Du /* 'M' */
#define MRT_DEVICE_SYNC1 0x52u /* 'R' */
#define MRT_DEVICE_PING 0x50u  /* 'P' */
#define MRT_DEVICE_INPUTS 0x49u /* 'I' */
#define MRT_DEVICE_HELLO 0x48u /* 'H' */
#define MRT_DEVICE_OUTPUTS 0x4Fu /* 'O' */
#define MRT_DEVICE_ERROR 0x45u /* 'E' */
#define MRT_DEVICE_FAULT 0x46u /* 'F' */

/* Payload of an 'E' frame. */
#define MRT_DEVICE_ERR_CRC 1u    /* the frame's CRC does not match */
#define MRT_DEVICE_ERR_LENGTH 2u /* an 'I' frame whose length is not the inputs' */
#define MRT_DEVICE_ERR_TYPE 3u   /* a type the device does not serve */

/* Setup writes for the UART's clock and pins (MRT_UART_SETUP, mrt_device.h). */
typedef struct mrt_device_setup {
  uint32_t address, clear, set;
} mrt_device_setup_t;

__attribute__((noinline, used)) void mrt_bench_begin(void) {
  __asm__ volatile("" ::: "memory");
}

__attribute__((noinline, used)) void mrt_bench_end(void) {
  __asm__ volatile("" ::: "memory");
}

static uint32_t mrt_device_get32(uint32_t *crc) {
  uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = mrt_uart_get();
  if (crc) *crc = mrt_crc32(*crc, b, 4);
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void mrt_device_send(const void *data, uint32_t size, uint32_t *crc) {
  const uint8_t *p = data;
  if (crc) *crc = mrt_crc32(*crc, p, size);
  for (uint32_t i = 0; i < size; ++i) mrt_uart_put(p[i]);
}

/* Starts a frame of `length` payload bytes: returns the CRC so far, which
 * mrt_device_send carries over the payload and mrt_device_end sends. */
static uint32_t mrt_device_begin(uint8_t type, uint32_t length) {
  const uint8_t head[7] = {MRT_DEVICE_SYNC0, MRT_DEVICE_SYNC1, type,
                           (uint8_t)length, (uint8_t)(length >> 8), (uint8_t)(length >> 16),
                           (uint8_t)(length >> 24)};
  mrt_device_send(head, 2, NULL);
  uint32_t crc = 0;
  mrt_device_send(head + 2, 5, &crc);
  return crc;
}

static void mrt_device_end(uint32_t crc) {
  mrt_device_send(&crc, 4, NULL); /* every supported core is little endian */
}

/* Sends one frame whose payload is `count` buffers end to end. */
static void mrt_device_frame(uint8_t type, const void *const *buffers, const uint32_t *sizes,
                             uint32_t count) {
  uint32_t length = 0;
  for (uint32_t i = 0; i < count; ++i) length += sizes[i];
  uint32_t crc = mrt_device_begin(type, length);
  for (uint32_t i = 0; i < count; ++i) mrt_device_send(buffers[i], sizes[i], &crc);
  mrt_device_end(crc);
}

static void mrt_device_word(uint8_t type, uint32_t word) {
  const void *buffer = &word;
  const uint32_t size = 4;
  mrt_device_frame(type, &buffer, &size, 1);
}

/* Called by the fault handlers (mrt_platform_util.h) with the fault record: sent as an
 * 'F' frame, whatever the path (this image has no host files). */
int mrt_platform_files(const char *path, int write, void *const *buffers,
                       const uint32_t *sizes, uint32_t count) {
  (void)path;
  (void)write;
  mrt_device_frame(MRT_DEVICE_FAULT, (const void *const *)buffers, sizes, count);
  return MRT_PLATFORM_FILES_OK;
}

/* A device image never ends: after a fault it waits for the reset. */
__attribute__((noreturn)) void mrt_platform_exit(int code) {
  (void)code;
  for (;;) __asm__ volatile("" ::: "memory");
}

int main(void) {
#ifdef MRT_UART_SETUP
  static const mrt_device_setup_t setup[] = {MRT_UART_SETUP};
  for (uint32_t i = 0; i < sizeof setup / sizeof setup[0]; ++i) {
    volatile uint32_t *reg = (volatile uint32_t *)setup[i].address;
    *reg = (*reg & ~setup[i].clear) | setup[i].set;
  }
#endif
  mrt_uart_init();
  const mrt_image_t *const image = &mrt_image;
  mrt_module_t module;
  const uint32_t *const in_sizes = image->io_sizes;
  const uint32_t *const out_sizes = image->io_sizes + image->input_count;
  uint32_t in_total = 0, out_total = 0;
  for (uint32_t i = 0; i < image->input_count; ++i) in_total += in_sizes[i];
  for (uint32_t i = 0; i < image->output_count; ++i) out_total += out_sizes[i];
  /* A module that does not load answers every request with its status and no outputs. */
  const mrt_status_t loaded =
      mrt_module_validate(mrt_image_module, image->module_size, image, &module);
  for (;;) {
    /* Hunt for the sync bytes: anything else on the line is skipped. */
    if (mrt_uart_get() != MRT_DEVICE_SYNC0) continue;
    uint8_t type = mrt_uart_get();
    if (type == MRT_DEVICE_SYNC0) type = mrt_uart_get(); /* "MMR..." */
    if (type != MRT_DEVICE_SYNC1) continue;
    type = mrt_uart_get();
    uint32_t crc = mrt_crc32(0, &type, 1);
    const uint32_t length = mrt_device_get32(&crc);
    if (type == MRT_DEVICE_INPUTS && length == in_total) {
      for (uint32_t i = 0; i < image->input_count; ++i) {
        uint8_t *p = mrt_image_inputs[i];
        for (uint32_t j = 0; j < in_sizes[i]; ++j) p[j] = mrt_uart_get();
        crc = mrt_crc32(crc, p, in_sizes[i]);
      }
    } else if (type == MRT_DEVICE_INPUTS || (type == MRT_DEVICE_PING && length != 0)) {
      /* Its payload is not read: the bytes are skipped by the sync hunt. */
      mrt_device_word(MRT_DEVICE_ERROR, MRT_DEVICE_ERR_LENGTH);
      continue;
    } else if (type != MRT_DEVICE_PING) {
      mrt_device_word(MRT_DEVICE_ERROR, MRT_DEVICE_ERR_TYPE);
      continue;
    }
    if (mrt_device_get32(NULL) != crc) {
      mrt_device_word(MRT_DEVICE_ERROR, MRT_DEVICE_ERR_CRC);
      continue;
    }
    if (type == MRT_DEVICE_PING) {
      const uint32_t hello[2] = {in_total, out_total};
      const void *buffer = hello;
      const uint32_t size = sizeof hello;
      mrt_device_frame(MRT_DEVICE_HELLO, &buffer, &size, 1);
      continue;
    }
    uint32_t status = (uint32_t)loaded;
    uint64_t cycles = 0;
    if (loaded == MRT_OK) {
      uint64_t mark;
      mrt_platform_cycles_start(&mark);
      mrt_bench_begin();
#ifdef MRT_MAX_CYCLES
      status = (uint32_t)mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs,
                                            mrt_image_arena);
#else
      mrt_module_execute(&module, mrt_image_inputs, mrt_image_outputs, mrt_image_arena);
#endif
      mrt_bench_end();
      cycles = mrt_platform_cycles_since(&mark);
    }
    /* Status, cycles and, after a finished inference, the outputs; a stopped one's
     * (or a module that did not load) are incomplete: none are sent. */
    const uint32_t sent = status == MRT_OK ? out_total : 0;
    uint32_t out_crc = mrt_device_begin(MRT_DEVICE_OUTPUTS, 12 + sent);
    mrt_device_send(&status, 4, &out_crc);
    mrt_device_send(&cycles, 8, &out_crc);
    for (uint32_t i = 0; sent && i < image->output_count; ++i)
      mrt_device_send(mrt_image_outputs[i], out_sizes[i], &out_crc);
    mrt_device_end(out_crc);
  }
}
