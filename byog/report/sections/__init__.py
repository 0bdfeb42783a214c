"""The sections of report.md, one small module each; ``byog.report.markdown.SECTIONS`` orders them."""
