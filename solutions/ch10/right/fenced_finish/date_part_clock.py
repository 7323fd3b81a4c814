"""A correct answer that reads the server's clock another way:
``date_part('epoch', clock_timestamp())``, the same instant as the
reference's ``extract`` (as double precision, not numeric), read when the
statement applies the change. A grader that knew the database's clock only
by the reference's spelling would refuse it."""

SERVER_NOW = "date_part('epoch', clock_timestamp())"
