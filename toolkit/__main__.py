from skillos.cli import main

main()
