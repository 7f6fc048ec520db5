from kilo_loop.cli import main

main()
