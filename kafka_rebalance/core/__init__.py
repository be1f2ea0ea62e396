"""What every layer shares without depending on any of them: the error tree the CLI maps to
exit codes (`errors.py`), the ports the adapters implement and the core calls (`ports.py`:
Kafka admin, metrics source, clock) and a partition's name (`names.py`). Imports nothing of the
project."""
