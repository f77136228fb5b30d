/* board.c - board.h for a hosted program (Linux): stdout and exit(). */
#include <stdio.h>
#include <stdlib.h>

#include "../board.h"

void board_puts(const char *s) { fputs(s, stdout); }

void board_exit(int code) {
  fflush(stdout);
  exit(code);
}
