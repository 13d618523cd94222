from rawtrio.entry import main

main()
