"""Scheduled jobs: the ``schedule`` tool, the scheduler that runs them as turns, their times."""
