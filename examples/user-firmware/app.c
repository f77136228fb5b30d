/*
 * app.c - a user's application that runs the sensor_net model through the library that
 * `minirt-build --emit library` makes (libminirt_sensor_net.a + sensor_net.h).
 *
 * It fills the model's input with fixed values, runs one inference and prints the
 * status and each output's raw bits in hex (exact, and no printf needed), then shows
 * that the entry refuses bad arguments with minirt's status codes. The same file builds
 * for every platform directory beside it; only board.h's two functions differ.
 */
#include <stddef.h>
#include <stdint.h>

#include "board.h"
#include "sensor_net.h"

static float input[SENSOR_NET_IN0_ELEMENTS];
static float output[SENSOR_NET_OUT0_ELEMENTS];

#if SENSOR_NET_ARENA_CALLER
/* --arena caller: the application owns the scratch memory (it could share it with other
 * work between inferences). */
static _Alignas(SENSOR_NET_ARENA_ALIGN) uint8_t arena[SENSOR_NET_ARENA_SIZE];
#define RUN(in, out) sensor_net_run((in), (out), arena)
#else
#define RUN(in, out) sensor_net_run((in), (out))
#endif

static void put_hex(uint32_t value) {
  char text[10];
  for (int i = 0; i < 8; i++) text[i] = "0123456789abcdef"[(value >> (28 - 4 * i)) & 0xFu];
  text[8] = ' ';
  text[9] = '\0';
  board_puts(text);
}

static void put_status(const char *what, int status) {
  char digits[12];
  int n = 0;
  unsigned v = status < 0 ? 0u - (unsigned)status : (unsigned)status;
  do digits[n++] = (char)('0' + v % 10u); while ((v /= 10u) != 0u);
  board_puts(what);
  board_puts(status < 0 ? " -" : " ");
  char text[12];
  for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
  text[n] = '\0';
  board_puts(text);
  board_puts("\n");
}

int main(void) {
  /* Fixed inputs, exact in binary: -1.0, -0.875, ... in steps of 0.125. */
  for (uint32_t i = 0; i < SENSOR_NET_IN0_ELEMENTS; i++) {
    input[i] = (float)((int)(i * 7u % 16u) - 8) * 0.125f;
  }
  put_status("init", sensor_net_init());
  const int status = RUN(input, output);
  put_status("run", status);
  board_puts("out0 ");
  for (uint32_t i = 0; i < SENSOR_NET_OUT0_ELEMENTS; i++) {
    union { float f; uint32_t u; } bits = {.f = output[i]};
    put_hex(bits.u);
  }
  board_puts("\n");
  /* The entry checks its arguments: a NULL buffer is MRT_ERR_ARGUMENT. */
  put_status("null", RUN(NULL, output));
#if SENSOR_NET_ARENA_CALLER
  /* ... and so is an arena off its 16-byte alignment. */
  put_status("misaligned", sensor_net_run(input, output, arena + 1));
#endif
  board_exit(status);
}
