from rawtrio.cli.entry import main

main()
