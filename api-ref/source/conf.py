# Sphinx configuration of the magnum-rs API reference (os-api-ref, like Magnum's api-ref).
# Build: pip install os-api-ref openstackdocstheme sphinx && sphinx-build -W -b html api-ref/source api-ref/build/html
extensions = ["os_api_ref", "openstackdocstheme"]
html_theme = "openstackdocs"
html_theme_options = {"sidebar_mode": "toc"}
project = "magnum-rs API Reference"
copyright = "magnum-rs contributors"
master_doc = "index"
