"""The workers in a process of their own: the intake's handle on it (start, submit, ask, restart, stop) and its main.

The webhook server's process then only verifies, journals and acknowledges; the workers' CPU (rendering, parsing
GitHub's answers) is scheduled by the operating system beside it, at a lower priority, instead of sharing one
interpreter lock with it. The two talk over a socket pair, one JSON object per line. The journal is the only
hand-over of work: a delivery is committed before the intake names it to the workers, and a workers' process
that starts (or starts again after a crash) resumes whatever the journal holds unfinished, so a name lost with
a dead process loses nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from bot.app.worker_messages import Answer, Ask, BadMessage, Message, Ready, Start, Stop, Submit, decode_message
from bot.core.config import Settings
from bot.delivery.journal import Queued
from bot.telemetry import logs

START_TIMEOUT = 60.0  # the workers' process opens the journal (or the database) and resumes its backlog
# The intake is what GitHub waits on (10 s before it calls a delivery failed); the workers wait on GitHub anyway.
WORKER_NICENESS = 10
RESTART_DELAYS = (1.0, 2.0, 5.0, 10.0, 30.0)  # after the workers' process ends unasked, then every 30 s
HEALTHY_AFTER = 60.0  # a process that ran this long starts the delays again from the first
LINE_LIMIT = 16 * 1024 * 1024  # one answer (a /metrics text, a /healthz report) per line
ASKS = ("liveness", "readiness", "health", "metrics", "idle")
PR_SET_PDEATHSIG = 1  # prctl(2): the signal the kernel sends this process when its parent ends


class WorkersUnavailable(RuntimeError):
    """The workers' process did not start, or ended while asked something; the message says which."""


class Channel:
    """One end of the socket pair: typed messages (bot/app/worker_messages.py) out and in, one JSON line each."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader, self.writer = reader, writer

    @classmethod
    async def over(cls, sock: socket.socket) -> Channel:
        return cls(*await asyncio.open_connection(sock=sock, limit=LINE_LIMIT))

    def send(self, message: Message) -> None:
        if not self.writer.is_closing():
            self.writer.write(json.dumps(message.encode(), separators=(",", ":")).encode() + b"\n")

    async def receive(self) -> Message | None:
        """The next message, or None once the other end has gone. A line of no known shape is logged and
        skipped: what it named stays in the journal, and the next start of the workers resumes it."""
        while True:
            try:
                line = await self.reader.readline()
            except (ConnectionError, ValueError):  # reset, or a line past LINE_LIMIT
                return None
            if not line:
                return None
            try:
                return decode_message(json.loads(line))
            except (ValueError, BadMessage) as exc:
                logs.event(
                    "message between the intake and the workers refused",
                    logging.ERROR,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                )

    def close(self) -> None:
        self.writer.close()


class WorkerProcess:
    """The intake's side: starts the workers' process, names each delivery it journals, asks it for its health,
    starts it again when it ends unasked, and stops it (drained) with the server."""

    def __init__(self, settings: Settings, *, command: tuple[str, ...] = ()):
        """`command`: how to start the workers' process, before its two arguments (the socket's descriptor and
        this process's pid); by default this module run by this interpreter."""
        self.settings = dataclasses.replace(settings, worker_process=False, worker_thread=False)
        self.command = command or (sys.executable, "-m", "bot.app.worker_process")
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.last_exit: int | None = None
        self._channel: Channel | None = None
        self._answers: dict[int, asyncio.Future] = {}
        self._asked = 0
        self._ready = False
        self._stopping = False
        self._stopped = asyncio.Event()
        self._watcher: asyncio.Task | None = None
        self._started_at = 0.0

    async def start(self) -> None:
        """Start the workers' process and wait until it has resumed the journal's backlog and runs."""
        await self._spawn()
        self._watcher = asyncio.create_task(self._watch(), name="workers-process-watch")

    async def _spawn(self) -> None:
        ours, theirs = socket.socketpair()
        with theirs:
            self.proc = subprocess.Popen(
                [*self.command, str(theirs.fileno()), str(os.getpid())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
            )
        self._channel = await Channel.over(ours)
        self._channel.send(Start(self.settings))
        self._started_at = time.monotonic()
        try:
            message = await asyncio.wait_for(self._channel.receive(), START_TIMEOUT)
        except TimeoutError:
            message = None
        if not isinstance(message, Ready):
            code = await self._reap(kill=True)
            raise WorkersUnavailable(f"the workers' process did not start (exit {code})")
        self._ready = True
        logs.event("workers process started", pid=self.proc.pid, resumed=message.resumed)

    async def _watch(self) -> None:
        """Read answers until the workers' process goes; then, unless it was asked to stop, start it again."""
        while True:
            channel = self._channel
            while channel is not None and (message := await channel.receive()) is not None:
                future = self._answers.pop(message.id, None) if isinstance(message, Answer) else None
                if future is not None and not future.done():
                    future.set_result(message)
            self._ready = False
            for future in self._answers.values():
                if not future.done():
                    future.set_exception(WorkersUnavailable("the workers' process ended"))
            self._answers.clear()
            code = await self._reap(kill=not self._stopping)
            if self._stopping:
                self._stopped.set()
                return
            self.last_exit = code
            ran = time.monotonic() - self._started_at
            delay = (
                RESTART_DELAYS[0]
                if ran >= HEALTHY_AFTER
                else RESTART_DELAYS[min(self.restarts, len(RESTART_DELAYS) - 1)]
            )
            logs.event(
                "workers process ended unasked; starting it again",
                logging.ERROR,
                exit=code,
                ran_seconds=round(ran, 1),
                restart_in=delay,
            )
            await asyncio.sleep(delay)
            self.restarts += 1
            try:
                await self._spawn()
            except (WorkersUnavailable, OSError) as exc:
                logs.event("workers process did not start", logging.ERROR, error=str(exc))

    async def _reap(self, *, kill: bool) -> int | None:
        """The ended (or, with `kill`, killed) process's exit code, its socket closed."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self.proc is None:
            return None
        if kill and self.proc.poll() is None:
            self.proc.kill()
        while self.proc.poll() is None:
            await asyncio.sleep(0.05)
        return self.proc.returncode

    @property
    def state(self) -> str:
        """'running', or why the workers are not."""
        if self._ready and self.proc is not None and self.proc.poll() is None:
            return "running"
        if self._stopping:
            return "stopping"
        if self.last_exit is not None:
            return f"restarting: the workers' process ended (exit {self.last_exit}); restarts so far {self.restarts}"
        return "not started"

    def submit(self, queued: Queued) -> None:
        """Name a journaled delivery to the workers. Without a running process nothing is lost: the next one
        resumes the journal's backlog when it starts."""
        if self._channel is not None:
            self._channel.send(Submit(queued))

    async def ask(self, what: str, timeout: float | None = None) -> Any:
        """The workers' answer to one of ASKS: their liveness, readiness or health report, their metrics text,
        or (idle) once every delivery they hold is done."""
        if what not in ASKS:
            raise ValueError(what)
        if not self._ready or self._channel is None:
            raise WorkersUnavailable(f"the workers' process is not running ({self.state})")
        self._asked += 1
        asked = self._asked
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        self._answers[asked] = future
        self._channel.send(Ask(asked, what, timeout))
        try:
            message: Answer = await asyncio.wait_for(future, None if timeout is None else timeout + 1.0)
        finally:
            self._answers.pop(asked, None)
        if message.error is not None:
            raise WorkersUnavailable(message.error)
        return message.value

    async def stop(self, timeout: float) -> None:
        """Ask the workers to finish what is in flight (at most `timeout`) and end; kill them past that."""
        self._stopping = True
        if self._watcher is None:
            return
        if self._ready and self._channel is not None:
            self._channel.send(Stop(timeout))
            try:
                await asyncio.wait_for(self._stopped.wait(), timeout + 5.0)
            except TimeoutError:
                logs.event("workers process did not stop in time; killed", logging.ERROR)
        self._watcher.cancel()  # also a start again under way, or its wait before
        with contextlib.suppress(asyncio.CancelledError):
            await self._watcher
        await self._reap(kill=True)


# -- the workers' process -------------------------------------------------------------------------------------


def _end_with_parent(parent: int) -> None:
    """Die with the intake: a killed server must not leave its workers writing behind it (Linux; elsewhere the
    closed socket ends them)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the line above ran
        os._exit(1)


async def _answer(bot: Any, channel: Channel, message: Ask) -> None:
    what, timeout = message.what, message.timeout
    try:
        if what not in ASKS:
            raise ValueError(f"no question {what!r}")
        if what == "idle":
            await bot.wait_idle(timeout)
            value: Any = True
        elif what == "metrics":
            value = (await bot.metrics_text()).decode()
        else:
            value = await getattr(bot, what)()
        channel.send(Answer(message.id, value=value))
    except Exception as exc:
        channel.send(Answer(message.id, error=f"{type(exc).__name__}: {exc}"))


async def _serve_workers(fd: int) -> int:
    from bot.app.runtime import Bot, live_github, log_secrets
    from bot.delivery.journal import JournalUnavailable
    from bot.telemetry.metrics import Metrics

    channel = await Channel.over(socket.socket(fileno=fd))
    first = await channel.receive()
    if not isinstance(first, Start):
        return 2
    settings = first.settings
    logs.setup(settings.logging_level())
    log_secrets(settings)
    try:
        bot = Bot(settings, live_github(settings, Metrics()))
    except JournalUnavailable as exc:
        print(f"sweepbot workers: {exc}", file=sys.stderr)
        return 2
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    resumed = await bot.start()
    channel.send(Ready(resumed))
    asks: set[asyncio.Task] = set()
    drain_timeout = settings.drain_timeout

    async def read() -> None:
        nonlocal drain_timeout
        while (message := await channel.receive()) is not None:
            if isinstance(message, Submit):
                bot.enqueue_queued(message.queued)
            elif isinstance(message, Ask):
                task = asyncio.create_task(_answer(bot, channel, message))
                asks.add(task)
                task.add_done_callback(asks.discard)
            elif isinstance(message, Stop):
                drain_timeout = message.timeout or drain_timeout
                break

    reading = asyncio.create_task(read())
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({reading, stopping}, return_when=asyncio.FIRST_COMPLETED)  # stop, SIGTERM or the intake gone
    for task in (reading, stopping, *asks):
        task.cancel()
    bot.settings = dataclasses.replace(bot.settings, drain_timeout=drain_timeout)
    await bot.stop()
    channel.close()
    return 0


def main(argv: list[str]) -> int:
    fd, parent = int(argv[0]), int(argv[1])
    _end_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the intake stops us in order
    with contextlib.suppress(OSError):
        os.nice(WORKER_NICENESS)
    return asyncio.run(_serve_workers(fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
