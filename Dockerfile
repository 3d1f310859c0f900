# The Octotrain image, built from this checkout with the locked dependencies (uv.lock). One image
# for everything:
#
# - the Airflow components of docker-compose.yaml and of the Helm chart (config/helm/values.yaml):
#   `airflow api-server|scheduler|dag-processor|triggerer|celery worker`, with Octotrain's DAGs
#   (/opt/octotrain/dags) and its plugin (registered by the installed project's `airflow.plugins`
#   entry point);
# - the init container (`octotrain node stage`) and the sidecar (`octotrain node sync`) of every
#   training pod (setting `octotrain_image`), and the demo algorithm in examples/ (numpy, psutil).
#
#     docker build -t octotrain:dev .
#     kind load docker-image octotrain:dev        # a kind cluster; or push it to a registry

# The pages' front-end packages (ECharts), pinned by plugins/ui/package-lock.json.
FROM node:22-bookworm-slim AS ui
WORKDIR /ui
COPY plugins/ui/package.json plugins/ui/package-lock.json ./
RUN npm ci --no-audit --no-fund --loglevel=error

FROM python:3.11-slim

RUN pip install --no-cache-dir "uv==0.13.8"
WORKDIR /opt/octotrain
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never

# Dependencies first (a layer that changes only with uv.lock), then the project itself.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY . .
COPY --from=ui /ui/node_modules plugins/ui/node_modules
RUN uv sync --frozen --no-dev && chmod -R a+rX /opt/octotrain

# Where the Airflow components write (AIRFLOW_HOME: logs, webserver_config.py; the state volume
# of docker-compose.yaml: run folders, node cache) belongs to group 0, so any uid with group 0
# runs them: 1000 (below, and docker-compose.yaml) or the Helm chart's 50000.
RUN mkdir -p /opt/airflow /opt/octotrain-state \
    && chgrp 0 /opt/airflow /opt/octotrain-state \
    && chmod 2775 /opt/airflow /opt/octotrain-state
# Two scripts of the official Airflow image that the Helm chart runs: `/entrypoint <command>` in
# its probes, and `bash /clean-logs` in its log-groomer sidecars (local log files older than
# AIRFLOW__LOG_RETENTION_DAYS go; task logs are kept in the object store).
RUN printf '#!/bin/sh\nexec "$@"\n' > /entrypoint \
    && printf '%s\n' '#!/bin/bash' 'while true; do' \
      '  find "$AIRFLOW_HOME/logs" -type f -name "*.log" -mtime +"${AIRFLOW__LOG_RETENTION_DAYS:-15}" -delete' \
      '  find "$AIRFLOW_HOME/logs" -mindepth 1 -type d -empty -delete' \
      '  sleep $((60 * ${AIRFLOW__LOG_CLEANUP_FREQUENCY_MINUTES:-15}))' \
      'done' > /clean-logs \
    && chmod 755 /entrypoint /clean-logs

ENV PATH=/opt/octotrain/.venv/bin:$PATH \
    AIRFLOW_HOME=/opt/airflow \
    AIRFLOW__CORE__DAGS_FOLDER=/opt/octotrain/dags \
    OCTOTRAIN_STATE_DIR=/tmp/octotrain-state
# A training pod's securityContext picks its user (the task's uid); any user can read the code.
USER 1000:0
ENTRYPOINT []
CMD ["octotrain", "--help"]
