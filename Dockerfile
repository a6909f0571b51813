# htcondor-sidecar beside a single-machine HTCondor pool (htcondor/mini runs its daemons from /start.sh).
#   docker build -t htcondor-sidecar .
#   docker run --rm -p 127.0.0.1:8000:8000 htcondor-sidecar --listen 0.0.0.0
# Arguments are sidecar flags; the image's SidecarConfig.yaml is used unless they name another.
# Inside the container the default listen address is its own loopback: enough for interLink in
# the same pod (one network namespace), --listen 0.0.0.0 to publish a port.
# The sidecar runs as the unprivileged "submituser": HTCondor refuses jobs owned by root.

# Build: npm ci installs Bun from the npm registry; bun build --compile makes one executable.
FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json deno.json ./
COPY src ./src
COPY scripts ./scripts
RUN npm run build

FROM htcondor/mini:25.13.2-el9
COPY --from=build /src/dist/htcondor-sidecar /usr/local/bin/htcondor-sidecar
COPY SidecarConfig.yaml /etc/htcondor-sidecar/SidecarConfig.yaml
COPY scripts/container-entrypoint.sh /usr/local/bin/sidecar-entrypoint
RUN chmod 0755 /usr/local/bin/htcondor-sidecar /usr/local/bin/sidecar-entrypoint \
 && sed -i 's|^DataRootFolder:.*|DataRootFolder: /var/lib/htcondor-sidecar|' /etc/htcondor-sidecar/SidecarConfig.yaml \
 && install -d -m 0700 -o submituser -g submituser /var/lib/htcondor-sidecar
EXPOSE 8000
ENTRYPOINT ["/usr/local/bin/sidecar-entrypoint"]
CMD []
