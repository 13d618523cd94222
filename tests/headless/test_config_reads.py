"""Config reads that used to hang or explode (issue 13, item 8), through the real program:
each is now exit code 2 with one message naming the file (or the flag), promptly."""

from __future__ import annotations

import os
import resource
import subprocess

from tests.headless.support import LIVENESS_S, Finished, Isolation, rawtrio_argv, run_rawtrio

#: Enough address space for rawtrio to start and report a config error; far less than an
#: unbounded read of /dev/zero would take, so a regression fails instead of eating memory.
ADDRESS_SPACE_CAP = 3 * 1024**3


def run_capped(iso: Isolation, *args: str) -> Finished:
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_CAP, ADDRESS_SPACE_CAP))

    proc = subprocess.run(
        rawtrio_argv(*args),
        cwd=iso.cwd,
        env=iso.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=LIVENESS_S,
        start_new_session=True,
        check=False,
        preexec_fn=cap,
    )
    return Finished(proc.returncode, proc.stdout, proc.stderr)


def assert_config_error(done: Finished, *parts: str) -> None:
    assert done.returncode == 2, done
    for part in parts:
        assert part in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_fifo_as_the_config_file_is_refused_without_hanging(iso: Isolation) -> None:
    iso.env()
    fifo = iso.root / "config.toml"
    os.mkfifo(fifo)
    # No writer ever opens the FIFO: a blocking open would wait forever (and, in a worker
    # thread, ignore SIGTERM). The liveness bound in run_rawtrio turns a hang into a failure.
    done = run_rawtrio(iso, "-p", "hi", "--config", str(fifo))
    assert_config_error(done, str(fifo), "is a FIFO (named pipe), not a regular file")


def test_dev_zero_as_the_config_file_is_refused_without_reading_it(iso: Isolation) -> None:
    iso.env()
    done = run_capped(iso, "-p", "hi", "--config", "/dev/zero")
    assert_config_error(done, "/dev/zero", "never reads files under /dev")


def test_a_config_linked_to_dev_zero_is_refused(iso: Isolation) -> None:
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    iso.env()
    config.parent.mkdir(parents=True)
    config.symlink_to("/dev/zero")
    done = run_capped(iso, "-p", "hi")
    assert_config_error(done, str(config), "resolves to /dev/zero")


def test_deeply_nested_toml_is_a_config_error_not_a_traceback(iso: Isolation) -> None:
    iso.env()
    config = iso.root / "deep.toml"
    config.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    done = run_rawtrio(iso, "-p", "hi", "--config", str(config))
    assert_config_error(done, str(config), "nested deeper than 64")


def test_a_symlink_loop_at_the_default_config_path_is_reported(iso: Isolation) -> None:
    config = iso.home / ".config" / "rawtrio" / "config.toml"
    iso.env()
    config.parent.mkdir(parents=True)
    config.symlink_to(config)
    done = run_rawtrio(iso, "-p", "hi", env={"ANTHROPIC_API_KEY": "test-key"})
    assert_config_error(done, str(config), "symlink loop")


def test_a_nan_sigterm_grace_is_refused(iso: Isolation) -> None:
    for value in ("nan", "inf", "-1"):
        done = run_rawtrio(
            iso, "-p", "hi", "--sigterm-grace", value, env={"ANTHROPIC_API_KEY": "test-key"}
        )
        assert_config_error(done, "--sigterm-grace", "expected seconds >= 0 (a finite number)")


def test_a_nan_or_infinite_number_in_the_config_is_refused(iso: Isolation) -> None:
    iso.env()
    config = iso.root / "numbers.toml"
    config.write_text("sigterm_grace_s = nan\n[agents.default]\nrequest_timeout_s = inf\n")
    done = run_rawtrio(iso, "-p", "hi", "--config", str(config))
    assert_config_error(
        done,
        f"{config}: sigterm_grace_s: expected a finite number",
        f"{config}: agents.default.request_timeout_s: expected a finite number",
    )


def test_config_check_says_when_the_key_variable_is_unset(iso: Isolation) -> None:
    assert run_rawtrio(iso, "config", "init").returncode == 0
    unset = run_rawtrio(iso, "config", "check")
    assert unset.returncode == 0, unset
    assert "ANTHROPIC_API_KEY is NOT set" in unset.stdout
    present = run_rawtrio(iso, "config", "check", env={"ANTHROPIC_API_KEY": "test-key"})
    assert "api key: from env ANTHROPIC_API_KEY (set)" in present.stdout
    assert "test-key" not in present.stdout
