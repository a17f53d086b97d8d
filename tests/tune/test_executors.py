"""The local executor's stop path: a signal that arrives while a worker is being started waits until the
pool tracks that worker, so `abandon` can kill it (an untracked worker outlived the command and printed a
traceback when the pool's semaphores were gone)."""

import signal

from furiosa_opt.tune import executors


def test_a_signal_during_a_submit_is_delivered_after_it_once():
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda number, frame: seen.append(number))
    try:
        with executors._signals_deferred():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
            assert seen == []  # held inside
        assert seen == [signal.SIGTERM]  # delivered once, to the handler in force before
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_abandon_leaves_no_worker_and_prints_nothing(capfd):
    import multiprocessing

    pool = executors.LocalExecutor(2)
    futures = [pool.submit(abs, -k) for k in range(6)]
    assert futures[0].result(timeout=60) == 0
    pool.abandon()
    assert multiprocessing.active_children() == []
    assert "Traceback" not in capfd.readouterr().err
