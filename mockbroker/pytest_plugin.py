"""The mockbroker pytest plugin (entry point ``pytest11``): on as soon as mockbroker is installed.

Imports nothing of the broker at load time: pytest loads this module in every test process of an
environment where mockbroker is installed, before any conftest runs.
"""
