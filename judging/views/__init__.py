"""Pages of the judging app for analysts (leaderboards and their plots / downloads)."""
