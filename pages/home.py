import streamlit as st

st.title("RAG workbench")
st.write("The UI is being built. Meanwhile: `python -m rag_core ingest examples/kb` then "
         "`python -m rag_core search \"...\"`.")
