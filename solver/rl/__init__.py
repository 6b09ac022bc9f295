"""Learned schedulers (``dlsched rl train PROBLEM`` / ``dlsched rl evaluate PROBLEM``).

Importing this package does not import torch: training modules import it when they run
(install the ``rl`` extra). Acting with a trained policy needs numpy and safetensors only.
"""
