"""Client quotas: rates, throttle times and quota managers."""
