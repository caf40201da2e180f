from cudnnload.cli import main

main()
