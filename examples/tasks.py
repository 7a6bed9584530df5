"""Tasks beside users: every kind of field, a reference, timestamps.

    python examples/tasks.py --storage sqlite:///tasks.db

Each task may name its owner, a user (``ref("users")``): the user must
exist, and cannot be deleted while a task names them. The store sets
``created`` and ``updated``. Every option of serve.py works (--help).
"""
import sys

from usersvc import USER, Schema, boolean, choice, date, datetime, number, ref, text, url
from usersvc.serving import main

TASKS = Schema("task", "tasks",
               {"title": text(200), "done": boolean, "estimate": number(0, 1000),
                "due": date, "remind_at": datetime, "priority": choice("low", "normal", "high"),
                "link": url, "owner": ref("users")},
               optional=("estimate", "due", "remind_at", "link", "owner"),
               filters=("done", "priority", "owner"), sorts=("title", "priority", "due"),
               filtered_sorts={"done": ("updated",)},
               words=("title",), timestamps=True)

if __name__ == "__main__":
    sys.exit(main(collections=(USER, TASKS)))
