from django.core.management.base import BaseCommand

from judging.demo import DEMO_PASSWORD, load_demo


class Command(BaseCommand):
    help = "Load the demo study (idempotent) and print the logins."

    def add_arguments(self, parser):
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args, **opts):
        result = load_demo(seed=opts["seed"])
        if result["created"]:
            self.stdout.write(f"Demo loaded: {result['comparisons']} comparisons, "
                              f"{result['submitted']} simulated judgments.")
        else:
            self.stdout.write("Demo already loaded.")
        logins = ", ".join(result["users"])
        self.stdout.write(f"Logins (password for all: {DEMO_PASSWORD}): {logins}")
