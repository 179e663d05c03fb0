"""``/docs``: Swagger UI over the service's OpenAPI schema, working offline. Its scripts and styles are served from
the ``swagger-ui-py`` package (a dependency of the ``serve`` extra, shipping Swagger UI 5, which reads OpenAPI 3.1)
instead of a CDN, so the page works on a machine without internet and a web page's CSP never has to trust a
third-party host."""

from __future__ import annotations

from typing import Any


def mount_docs(app: Any, path: str = "/docs") -> None:
    """Serve Swagger UI at ``path`` with its assets at ``path/assets``; without the package, ``/docs`` says how
    to get it (the schema stays at ``/openapi.json``)."""
    from importlib.util import find_spec
    from pathlib import Path

    from fastapi.openapi.docs import get_swagger_ui_html
    from fastapi.responses import HTMLResponse, PlainTextResponse

    spec = find_spec("swagger_ui")
    assets = Path(spec.origin).parent / "static" if spec is not None and spec.origin else None
    if assets is None or not (assets / "swagger-ui-bundle.js").exists():
        def missing() -> PlainTextResponse:
            return PlainTextResponse("Swagger UI needs the swagger-ui-py package (pip install 'pagemind[serve]');"
                                     " the schema is at /openapi.json", status_code=404)

        app.add_api_route(path, missing, include_in_schema=False)
        return
    from fastapi.staticfiles import StaticFiles

    app.mount(f"{path}/assets", StaticFiles(directory=str(assets)), name="docs-assets")

    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title="pagemind API",
                                   swagger_js_url=f"{path}/assets/swagger-ui-bundle.js",
                                   swagger_css_url=f"{path}/assets/swagger-ui.css",
                                   swagger_favicon_url=f"{path}/assets/favicon-32x32.png")

    app.add_api_route(path, docs, include_in_schema=False)
