FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY mockbroker ./mockbroker
RUN pip install --no-cache-dir .
EXPOSE 9092
ENTRYPOINT ["mockbroker", "serve"]
CMD ["--host", "0.0.0.0", "--port", "9092"]
