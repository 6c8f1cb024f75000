"""The pods operators build from their objects, one module per operator family; ``templates`` holds the table."""
