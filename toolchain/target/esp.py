"""Espressif chips as the ESP image format and esptool know them: a table, read by the
board validation (which chips and flash sizes a board may name), the image writer
(toolchain/link/esp_image.py) and the ``esptool`` flash method.

Values are those of Espressif's image format (ESP-IDF Programming Guide, "App Image
Format": ``esp_image_header_t`` and ``esp_chip_id_t``) and of esptool's chip classes
(``IMAGE_CHIP_ID``, ``BOOTLOADER_FLASH_OFFSET``, ``FLASH_FREQUENCY``, ``FLASH_SIZES``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ESP_CHIPS", "FLASH_MODES", "FLASH_SIZES", "EspChip"]


@dataclass(frozen=True)
class EspChip:
    """One chip: what its image header says and where its ROM loader reads the image."""

    image_chip_id: int  # esp_image_header_t.chip_id: the ROM and esptool refuse another
    rom_load_offset: int  # flash offset the ROM loader reads its (second-stage) image from
    # SPI flash clock -> the header's low nibble of byte 3 (esptool FLASH_FREQUENCY)
    flash_freq: dict[str, int]
    default_freq: str


ESP_CHIPS: dict[str, EspChip] = {
    # ESP32-C3: the ROM loads the image at flash offset 0 (ESP32-C3 TRM, chapter "Chip
    # Boot Control": SPI boot reads the second-stage image from offset 0).
    "esp32c3": EspChip(5, 0x0, {"80m": 0xF, "40m": 0x0, "26m": 0x1, "20m": 0x2}, "80m"),
    # ESP32-C6: as the C3; esptool writes 80 MHz as 0x0 too (its note: the ROM's MSPI
    # divider for 0xF is wrong), so that is what we write.
    "esp32c6": EspChip(13, 0x0, {"80m": 0x0, "40m": 0x0, "20m": 0x2}, "80m"),
}

# esp_image_spi_mode_t: the SPI mode in header byte 2.
FLASH_MODES: dict[str, int] = {"qio": 0, "qout": 1, "dio": 2, "dout": 3}

# esp_image_flash_size_t: the flash chip size in the high nibble of header byte 3.
FLASH_SIZES: dict[str, int] = {"1MB": 0x00, "2MB": 0x10, "4MB": 0x20, "8MB": 0x30,
                               "16MB": 0x40, "32MB": 0x50, "64MB": 0x60, "128MB": 0x70}
