"""The processes rawtrio starts: process groups, markers, bounded output, the watchdog."""
