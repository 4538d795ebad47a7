"""tests/support/checks.py: the tally the script tests keep.

    checks = Checks()
    checks.check("name", condition, detail)   # prints "FAIL name: detail" when false
    sys.exit(checks.finish())                 # prints "N passed, N failed"; 1 if any failed
"""


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, condition, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
