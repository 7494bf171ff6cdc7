"""The hang report of the test run names each task and the line it waits on."""

from __future__ import annotations

import asyncio

from tests.hang_report import task_stacks


async def test_the_report_names_each_task_and_the_line_it_waits_on() -> None:
    released = asyncio.Event()

    async def parked() -> None:
        await released.wait()

    task = asyncio.create_task(parked(), name="parked-task")
    await asyncio.sleep(0)
    report = await asyncio.to_thread(task_stacks)  # read from another thread, as the timer does
    released.set()
    await task
    assert "--- parked-task" in report
    assert "await released.wait()" in report
