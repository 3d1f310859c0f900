"""A sweep's Optuna study: the search's whole state, in the catalog's own database (Optuna's RDB
storage, on the same SQLite file or PostgreSQL database), so that a driver started again after
its worker or the scheduler died carries on where the last one stopped.

Here a sweep document becomes Optuna's objects: each swept parameter a distribution, the search a
sampler, early stopping a pruner. Optuna keeps its tables beside the catalog's (``studies``,
``trials``, ...); the catalog's schema revision has its own table for that reason
(``octotrain.catalog.migrate``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.pruners import (
    BasePruner,
    HyperbandPruner,
    MedianPruner,
    NopPruner,
    SuccessiveHalvingPruner,
)
from optuna.samplers import BaseSampler, GridSampler, RandomSampler, TPESampler
from optuna.storages import BaseStorage, RDBStorage, get_storage
from sqlalchemy.engine import make_url

from hooks.storage.catalog import SQLITE_BUSY_TIMEOUT_MS
from octotrain.catalog.models import Sweep
from octotrain.sweep_spec import SweepSpec

optuna.logging.set_verbosity(logging.WARNING)
_storages: dict[str, BaseStorage] = {}
_storages_lock = threading.Lock()


def study_storage(catalog_url: str) -> BaseStorage:
    """Optuna's storage in the catalog's database, one per process and URL, with Optuna's own
    cache of finished trials (which never change): a sweep page read again reads only the
    trials still running or new since (a first read of 200 trials takes 0.2 s, the next 1 ms)."""
    with _storages_lock:
        storage = _storages.get(catalog_url)
        if storage is None:
            kwargs: dict[str, Any] = {"pool_pre_ping": True}
            if make_url(catalog_url).get_backend_name() == "sqlite":
                kwargs = {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}}
            storage = get_storage(RDBStorage(catalog_url, engine_kwargs=kwargs))
            _storages[catalog_url] = storage
        return storage


def distributions(spec: SweepSpec) -> dict[str, BaseDistribution]:
    """Each varying parameter's distribution (fixed ones are not searched)."""
    found: dict[str, BaseDistribution] = {}
    for name, swept in spec.parameters.items():
        if swept.type == "int":
            assert swept.low is not None and swept.high is not None
            found[name] = IntDistribution(
                int(swept.low), int(swept.high), log=swept.log, step=int(swept.step or 1)
            )
        elif swept.type == "float":
            assert swept.low is not None and swept.high is not None
            found[name] = FloatDistribution(
                float(swept.low), float(swept.high), log=swept.log, step=swept.step
            )
        elif swept.type == "choice":
            found[name] = CategoricalDistribution(list(swept.choices))
    return found


class DrivenGridSampler(GridSampler):
    """Optuna's grid sampler in an ask-and-tell loop. Told the last point's result, Optuna's
    own calls ``study.stop()``, which only works inside ``study.optimize``: anywhere else it
    raises, and the driver's task failed once per grid sweep. The driver ends the sweep itself
    once every point has been asked for (``SweepSpec.grid_size``)."""

    def after_trial(
        self,
        study: optuna.Study,
        trial: optuna.trial.FrozenTrial,
        state: optuna.trial.TrialState,
        values: Sequence[float] | None,
    ) -> None:
        """Nothing to do: see the class."""


def sampler(spec: SweepSpec, *, asked: int = 0) -> BaseSampler:
    """The search's sampler, for a study that has ``asked`` trials already. A seeded sampler
    made again by a driver started after a crash would draw the first trials' values again:
    its seed moves on by the trials asked, so a sweep's seed still fixes what it tries and a
    restart repeats nothing (a grid skips the points its study has tried)."""
    seed = None if spec.search.seed is None else spec.search.seed + asked
    if spec.search.sampler == "grid":
        space = {
            name: swept.grid_points()
            for name, swept in spec.parameters.items()
            if swept.type != "fixed"
        }
        return DrivenGridSampler(space, seed=spec.search.seed)
    if spec.search.sampler == "random":
        return RandomSampler(seed=seed)
    return TPESampler(seed=seed)


def pruner(spec: SweepSpec) -> BasePruner:
    """No trial is stopped before its objective reached ``min_steps``."""
    stopping = spec.early_stopping
    least = max(1, stopping.min_steps)
    if stopping.pruner == "median":
        return MedianPruner(
            n_startup_trials=stopping.startup_trials, n_warmup_steps=stopping.min_steps
        )
    if stopping.pruner == "successive_halving":
        return SuccessiveHalvingPruner(min_resource=least)
    if stopping.pruner == "hyperband":
        return HyperbandPruner(min_resource=least)
    return NopPruner()


def open_study(sweep: Sweep, spec: SweepSpec, catalog_url: str) -> optuna.Study:
    """The sweep's study, made the first time (its name is the sweep's)."""
    return optuna.create_study(
        study_name=sweep.study_name,
        storage=study_storage(catalog_url),
        sampler=sampler(spec, asked=len(study_trials(sweep, catalog_url))),
        pruner=pruner(spec),
        direction=spec.objective.direction,
        load_if_exists=True,
    )


def study_trials(sweep: Sweep, catalog_url: str) -> list[optuna.trial.FrozenTrial]:
    """The sweep's trials as its study holds them (none before it started)."""
    storage = study_storage(catalog_url)
    try:
        study_id = storage.get_study_id_from_name(sweep.study_name)
    except KeyError:
        return []
    return storage.get_all_trials(study_id, deepcopy=False)
