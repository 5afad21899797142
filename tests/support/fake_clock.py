"""A clock that only moves when something sleeps on it (rate-limiter tests)."""


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
