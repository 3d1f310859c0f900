# The Octotrain image: what the init container (`octotrain node stage`) and the sidecar
# (`octotrain node sync`) of every training pod run (setting `octotrain_image`), built from
# this checkout with the locked dependencies:
#
#     docker build -t octotrain:dev .
#     kind load docker-image octotrain:dev        # a kind cluster; or push it to a registry
#
# It also holds examples/ (the demo algorithm runs in it on a real cluster: numpy, psutil).
FROM python:3.11-slim

RUN pip install --no-cache-dir "uv==0.13.8"
WORKDIR /opt/octotrain
ENV UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 UV_PYTHON_DOWNLOADS=never

# Dependencies first (a layer that changes only with uv.lock), then the project itself.
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project
COPY . .
RUN uv sync --frozen --no-dev && chmod -R a+rX /opt/octotrain

ENV PATH=/opt/octotrain/.venv/bin:$PATH \
    OCTOTRAIN_STATE_DIR=/tmp/octotrain-state
# The pod's securityContext picks the user (the task's uid); any user can read the code.
USER 1000
ENTRYPOINT []
CMD ["octotrain", "--help"]
