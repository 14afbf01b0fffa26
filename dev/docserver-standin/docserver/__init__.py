"""OnlyOffice Document Server stand-in: ConvertService on its wire format, LibreOffice underneath."""
