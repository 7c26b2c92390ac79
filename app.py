"""Entry point: `streamlit run app.py`. Navigation and the shared sidebar only; no logic here."""

import streamlit as st

st.set_page_config(page_title="RAG workbench", page_icon="🧰", layout="wide")
st.navigation([st.Page("pages/home.py", title="Home", icon="🏠", default=True)]).run()
