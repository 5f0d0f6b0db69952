"""What programs and results look like outside Python: assembly, hex files, bundles, memory images, run results."""
