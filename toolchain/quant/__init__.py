"""Integer-only int8 inference: TFLite Micro's exact arithmetic and the int8 graph build."""
