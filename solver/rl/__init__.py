"""Learned schedulers: training (``dlsched rl train PROBLEM``) and the Gymnasium environments.

Importing this package registers the environments with Gymnasium when it is installed
(the ``rl`` extra), the Gymnasium 1.x convention::

    import gymnasium as gym
    import dlsched.rl

    gym.register_envs(dlsched.rl)
    env = gym.make("dlsched/Sched2-v0", workloads=[...])

It does not import torch: training modules import it when they run. Acting with a trained
policy needs numpy and safetensors only (:mod:`dlsched.heuristics`).
"""

from importlib.util import find_spec

if find_spec("gymnasium") is not None:  # the environments exist only with Gymnasium
    from .sched2_env import register as _register_sched2

    _register_sched2()
