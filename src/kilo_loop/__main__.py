from kilo_loop.entry import main

main()
