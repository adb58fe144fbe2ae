"""The PerfDojo web application (Django project). A thin layer over dojo_core."""
