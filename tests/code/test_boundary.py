"""What brain code cannot reach from its worker: Keel's environment, Keel's life, a place
outside its process group, the network when MANIFEST says no — and nothing it starts
outlives its call."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from keel.brain.constitution import CodeAccess
from keel.code import CodeRunner
from keel.code.seccomp import ARCHES
from tests.code.support import a_match, match_code, write_code

# Where the worker can apply its seccomp filter (and so refuse signals and setsid).
CONFINED = sys.platform.startswith("linux") and os.uname().machine.lower() in ARCHES
confined = pytest.mark.skipif(not CONFINED, reason="seccomp filters exist for Linux x86-64/AArch64")


def _said(runner: CodeRunner, root: Path, body: str, imports: str = "") -> list[str]:
    """What a match with this body logged (its failure, if it failed)."""
    path = write_code(root, match_code(body, imports=imports))
    (answer,) = runner.match_all([a_match(path, timeout_ms=10_000)])
    assert answer.failure is None, str(answer.failure)
    return list(answer.log)


@pytest.fixture
def runner(code_root: Path) -> Iterator[CodeRunner]:
    with CodeRunner(code_root, workers=1) as runner:
        yield runner


SECRETS = {
    "OPENAI_API_KEY": "sk-not-a-real-key",
    "KEEL_SERVE_TOKEN": "serve-token",
    "KEEL_DB": "postgresql://keel:hunter2@db.example/brain",
    "PGPASSWORD": "hunter2",
    "BRAIN_REGION": "eu-west",
}


def test_a_worker_sees_only_what_its_brain_declares(
    code_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    declared = CodeAccess(env=("BRAIN_REGION", "KEEL_SERVE_TOKEN", "NOT_SET_ANYWHERE"))
    with CodeRunner(code_root, access=declared, workers=1) as runner:
        (line,) = _said(
            runner, code_root, "ctx.log(json.dumps(dict(os.environ)))", "import json, os\n"
        )
    seen = json.loads(line)
    assert seen["BRAIN_REGION"] == "eu-west"
    kept = {"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TZ", "PYTHONHOME", "PYTHONPATH"}
    assert {n for n in seen if not n.startswith("LC_")} <= kept | {"BRAIN_REGION"}
    assert "KEEL_SERVE_TOKEN" not in seen, "Keel's own variables are never passed"
    assert not any(secret in line for secret in ("sk-not", "serve-token", "hunter2"))


@confined
def test_brain_code_cannot_signal_keel(runner: CodeRunner, code_root: Path) -> None:
    # Signal 0 only asks whether a signal could be sent: safe to try, even against pid -1.
    body = (
        "keel = os.getppid()\n"
        "for what, fn in [('pid', lambda: os.kill(keel, 0)),\n"
        "                 ('group', lambda: os.killpg(os.getpgid(keel), 0)),\n"
        "                 ('everyone', lambda: os.kill(-1, 0)),\n"
        "                 ('thread', lambda: signal.pthread_kill(threading.main_thread().ident, 0)),\n"
        "                 ('itself', lambda: os.kill(os.getpid(), 0))]:\n"
        "    try:\n"
        "        fn()\n"
        "        ctx.log(what, 'sent')\n"
        "    except PermissionError:\n"
        "        ctx.log(what, 'refused')"
    )
    said = _said(runner, code_root, body, "import os, signal, threading\n")
    assert said == [
        "pid refused",
        "group refused",
        "everyone refused",
        "thread sent",
        "itself sent",
    ]


HOST = """
import json, sys
from pathlib import Path
from keel.code import CodeRunner
from tests.code.support import a_match

root = Path(sys.argv[1])
with CodeRunner(root, workers=1) as runner:
    (killing,) = runner.match_all([a_match(sys.argv[2], timeout_ms=10_000)])
    runner.wait_ready(30)
    (after,) = runner.match_all([a_match(sys.argv[3], timeout_ms=10_000)])
print(json.dumps([str(killing.failure), after.linked]))
"""


@confined
def test_keel_outlives_brain_code_that_tries_to_kill_it(code_root: Path) -> None:
    """Keel here is a process of its own: were the kill to work, it would end that one."""
    kills = write_code(
        code_root,
        match_code(
            "os.kill(os.getppid(), signal.SIGKILL)\nreturn {}", imports="import os, signal\n"
        ),
    )
    fine = write_code(code_root, match_code("return {}"))
    here = str(Path(__file__).parents[2])
    host = subprocess.run(
        [sys.executable, "-c", HOST, str(code_root), kills, fine],
        capture_output=True,
        text=True,
        cwd=here,
        env={**os.environ, "PYTHONPATH": here},
        timeout=120,
        check=False,
    )
    assert host.returncode == 0, host.stderr
    failure, linked_after = json.loads(host.stdout.strip().splitlines()[-1])
    assert "match raised PermissionError" in failure
    assert linked_after is True


@confined
def test_brain_code_cannot_leave_its_process_group(runner: CodeRunner, code_root: Path) -> None:
    body = (
        "for what, fn in [('setsid', os.setsid), ('setpgid', lambda: os.setpgid(0, 0)),\n"
        "                 ('new session', lambda: subprocess.run(['true'], start_new_session=True))]:\n"
        "    try:\n"
        "        fn()\n"
        "        ctx.log(what, 'left')\n"
        "    except (PermissionError, subprocess.SubprocessError):\n"
        "        ctx.log(what, 'refused')"
    )
    said = _said(runner, code_root, body, "import os, subprocess\n")
    assert said == ["setsid refused", "setpgid refused", "new session refused"]


DETACH = """
import os, sys, time
if os.fork() == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        with open(sys.argv[1] + ".tmp", "w") as out:
            out.write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(120)
    os._exit(0)
os._exit(0)
"""


def test_nothing_a_call_starts_outlives_it(
    runner: CodeRunner, code_root: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "detached.pid"
    body = (
        f"subprocess.run([sys.executable, '-c', {DETACH!r}, {str(marker)!r}], check=True)\n"
        f"while not os.path.exists({str(marker)!r}):\n"
        "    ctx.signal.wait(0.01)\n"
        "return {}"
    )
    path = write_code(code_root, match_code(body, imports="import os, subprocess, sys\n"))
    (answer,) = runner.match_all([a_match(path, timeout_ms=10_000)])
    assert answer.failure is None, str(answer.failure)
    detached = int(marker.read_text())
    try:
        # The call's answer came after its worker ended (and reaped) what the call started.
        assert not Path(f"/proc/{detached}").exists()
    finally:
        if Path(f"/proc/{detached}").exists():
            os.kill(detached, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether the process runs (a zombie, ended but not yet reaped by its parent, does not);
    a process just sent SIGKILL may take a moment to end: waited for, up to a bound."""
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(1000):
        try:
            state = stat.read_text().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            return False
        if state in ("Z", "X"):
            return False
        threading.Event().wait(0.01)
    return True


def test_a_worker_killed_under_a_call_fails_that_call_and_takes_its_group(
    runner: CodeRunner, code_root: Path, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    body = (
        "child = subprocess.Popen(['sleep', '120'])\n"
        f"with open({str(started) + '.tmp'!r}, 'w') as out:\n"
        "    out.write(str(child.pid))\n"
        f"os.rename({str(started) + '.tmp'!r}, {str(started)!r})\n"
        "time.sleep(60)\n"
        "return {}"
    )
    path = write_code(code_root, match_code(body, imports="import os, subprocess, time\n"))
    (pid,) = runner.pids()

    def kill_once_started() -> None:
        while not started.exists():
            threading.Event().wait(0.01)
        os.kill(pid, signal.SIGKILL)  # the worker alone, as something outside Keel might

    killer = threading.Thread(target=kill_once_started)
    killer.start()
    (answer,) = runner.match_all([a_match(path, timeout_ms=30_000)])
    killer.join()
    child = int(started.read_text())
    try:
        assert answer.failure is not None
        assert answer.failure.kind == "crash"
        assert "was killed by SIGKILL" in answer.failure.reason
        assert not _running(child), "what the call started went with its worker"
    finally:
        if _running(child):
            os.kill(child, signal.SIGKILL)
    assert runner.wait_ready(30)
    fine = write_code(code_root, match_code("return {}"))
    assert runner.match_all([a_match(fine)])[0].linked


@confined
def test_network_false_refuses_connections(code_root: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    body = (
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
        "    ctx.log('connected')\n"
        "except OSError as exc:\n"
        "    ctx.log(type(exc).__name__)"
    )
    try:
        with CodeRunner(code_root, workers=1) as runner:
            assert _said(runner, code_root, body, "import socket\n") == ["connected"]
        with CodeRunner(code_root, access=CodeAccess(network=False), workers=1) as runner:
            assert _said(runner, code_root, body, "import socket\n") == ["PermissionError"]
    finally:
        listener.close()


def test_a_changed_manifest_applies_to_the_next_calls(
    code_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BRAIN_REGION", "eu-west")
    body = "ctx.log(os.environ.get('BRAIN_REGION', 'unset'))"
    with CodeRunner(code_root, workers=1) as runner:
        assert _said(runner, code_root, body, "import os\n") == ["unset"]
        runner.reconfigure(CodeAccess(env=("BRAIN_REGION",)))
        assert _said(runner, code_root, body, "import os\n") == ["eu-west"]
