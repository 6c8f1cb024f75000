"""The stack program run offline under Pulumi's mocks (``program``), and the values as the engine gives them
(``values``)."""
