"""The hooks that speak to Airflow: its REST API, its internals (quarantined in airflow_compat), DAG
parsing, DAG runs, dataset Assets."""
