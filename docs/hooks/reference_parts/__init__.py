"""The generated parts of the docs' pages, one module for each, made from the code at every
build; the docs' build hook (docs/hooks/generated_reference.py) puts each where its page's
marker is."""
