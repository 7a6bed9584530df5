"""Run usersvc under waitress: ``python serve.py --help`` lists the options."""
import sys

from usersvc.serving import main

if __name__ == "__main__":
    sys.exit(main())
