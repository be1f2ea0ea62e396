"""SIGTERM (systemd, `timeout`, kill) ends execute, resume, cancel and auto the way Ctrl-C
does, and only while their run goes on."""

from __future__ import annotations

import os
import signal
import time

import pytest

from kafka_rebalance.commands.execute_run import sigterm_as_ctrl_c


def test_sigterm_inside_the_run_is_an_interrupt_and_the_old_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), sigterm_as_ctrl_c():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler interrupts the sleep
        pytest.fail("SIGTERM did not interrupt the run")
    assert signal.getsignal(signal.SIGTERM) is before
