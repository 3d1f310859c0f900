-- The catalog lives in its own database beside Airflow's metadata DB.
CREATE DATABASE octotrain OWNER airflow;
