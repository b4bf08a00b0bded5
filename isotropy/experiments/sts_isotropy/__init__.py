"""``isotropy run sts-isotropy``: isotropy-enhancing transforms on STS (Rajaee & Pilehvar, 2021)."""
