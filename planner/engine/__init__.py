"""The stack program run offline under Pulumi's mocks (``program``), what the mocks answer in place of the cloud
(``mocks``), and the values as the engine gives them (``values``)."""
