"""Streamlit-side helpers shared by the pages: the cached workbench, rendering components, and the
pure functions behind them (HTML, tables, plotly figures), which are unit-tested without Streamlit.

Importing `ui` (every page does) also makes a page URL opened first on a fresh server run through
app.py (see ui/navigation.py).
"""

from .navigation import run_through_app

run_through_app()
