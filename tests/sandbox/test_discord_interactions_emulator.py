"""The Discord emulator's message components and interactions over raw HTTP: buttons kept
with a message, a press answered once (a second answer 40060, an unknown one 10062), a type 7
answer updating the pressed message."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from sandbox.discord_api import DiscordEmulator

DM_ID = 700000000000000030
ALICE_ID = 1001
BUTTONS = [
    {
        "type": 1,
        "components": [
            {"type": 2, "style": 1, "label": "Yes", "custom_id": "ap:1:once"},
            {"type": 2, "style": 4, "label": "No", "custom_id": "ap:1:deny"},
        ],
    }
]


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    emu = DiscordEmulator()
    await emu.start()
    try:
        yield emu
    finally:
        await emu.stop()


async def test_a_press_is_answered_once_and_an_update_changes_the_message(
    emulator: DiscordEmulator,
) -> None:
    emulator.push_message(DM_ID, "hi", author_id=ALICE_ID)
    auth = {"Authorization": f"Bot {emulator.token}"}
    base = emulator.api_base_url
    async with aiohttp.ClientSession() as http:
        async with http.post(
            f"{base}/channels/{DM_ID}/messages",
            json={"content": "allow?", "components": BUTTONS},
            headers=auth,
        ) as response:
            sent = await response.json()
        assert sent["components"] == BUTTONS
        with pytest.raises(KeyError):
            emulator.press_button(sent["id"], "ap:1:always", user_id=ALICE_ID)
        press = emulator.press_button(sent["id"], "ap:1:once", user_id=ALICE_ID)
        assert press["type"] == 3 and press["data"]["custom_id"] == "ap:1:once"
        assert press["user"]["id"] == str(ALICE_ID)

        url = f"{base}/interactions/{press['id']}/{press['token']}/callback"
        update = {"type": 7, "data": {"content": "allowed", "components": []}}
        async with http.post(url + "?with_response=true", json=update) as response:
            assert response.status == 200
            answer = await response.json()
        assert answer["interaction"]["id"] == press["id"]
        async with http.post(url, json=update) as response:
            assert response.status == 400
            assert (await response.json())["code"] == 40060
        async with http.post(url.replace(press["token"], "forged"), json=update) as response:
            assert response.status == 404
            assert (await response.json())["code"] == 10062
    shown = emulator.message(sent["id"])
    assert shown is not None and shown["content"] == "allowed" and shown["components"] == []
    assert [c["type"] for c in emulator.interaction_callbacks] == [7]
